"""Delivery at the providers' limits, on the local cloud, against provider fakes that enforce them.

Starts `herald local` with Herald's pace set to the limits given here, and the fakes told to enforce the same
limits as the providers do (a call over one is refused with the provider's own rate-limit code: Feishu
`99991400`/HTTP 429 for the app, `230020` for a chat; Tencent IM `60011`) and to answer every call after
`--latency-ms`. Then, one after the other:

  (a) one service, one chat: `--cards` cards x `--revisions` revisions posted at once (coalescing);
  (b) one service ordering by target (`order: target`), `--chats` chats x `--per-chat` events, posted chat by
      chat (each chat's events together, as a job's progress comes); then the same load from a service in the
      default order (one lane: each chat's pace holds up every other chat). Posted all at once instead, the
      chats' events interleave and the default order is bound by each call's answer rather than a chat's pace;
      chat by chat is the load where one chat holds up the others, which lanes are for;
  (c) a burst of `--confirms` confirms to `--receivers` receivers through Tencent IM (an owner service's, in
      rounds: a receiver's k-th confirm is made in round k, so its pushes have an order to keep);
  (d) two services sharing one Feishu app, by weight, on clouds of their own (tests/bench/shared_app.py).

Each scenario is audited from the fakes' logs: `delivered_per_s` (provider calls a second from the first to
the last), `ceiling_per_s` (the binding limit), `ratio`, `provider_calls`, `provider_refusals`, `superseded`
(jobs Herald did not send because a newer revision of their card was waiting), `order_violations` (a card shown
an older revision after a newer one, a lane's events delivered out of receive order, a receiver's confirms
pushed out of order); (a) also `max_calls_per_card` and `posted_per_s`, (b) `speedup_vs_service_order`, (c)
`created_per_s` (the owner API's pace, which pushes cannot outrun). The last line printed
is one JSON object of them. Intake limits are off (this measures delivery), and Feishu's per-minute app limit
is neither paced nor enforced (its per-second one is).

    python tests/bench/delivery_at_limits.py [--feishu-app-per-second 50 --feishu-chat-per-second 5 ...]
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "infra"), str(REPO / "layers")]

import httpx  # noqa: E402

from herald.auth.dynamo import DynamoServiceKeyStore  # noqa: E402
from herald.auth.service_keys import ServiceKeys  # noqa: E402
from herald.events.dynamo import DynamoEventStore  # noqa: E402
from herald.events.jobs import Job  # noqa: E402
from herald.events.models import Lane  # noqa: E402
from tests.bench.shared_app import backing_engines, cloud_running, set_fake_limits, shared_app  # noqa: E402
from tests.support.local_cloud import RATE_LIMITS_OFF, LocalCloudProcess  # noqa: E402
from tests.support.owner import LoopbackOwner  # noqa: E402

INTAKE_LIMITS_OFF = {name: value for name, value in RATE_LIMITS_OFF.items() if "RATE_LIMIT" in name}
DEADLINE_S = 900.0


def descents(values: list[int], repeats_count: bool = False) -> int:
    """Steps back in `values` (and, with `repeats_count`, steps that stay: a card shown the same revision twice)."""
    return sum(later < earlier or (repeats_count and later == earlier) for earlier, later in itertools.pairwise(values))


class Bench:
    def __init__(self, cloud: LocalCloudProcess, args: argparse.Namespace) -> None:
        self.cloud = cloud
        self.args = args
        self.feishu = cloud.fake_url("feishu")
        self.tencent = cloud.fake_url("tencent_im")
        self.keys = ServiceKeys(DynamoServiceKeyStore(cloud.resource("ServiceKeysTable"), cloud.client("dynamodb")))
        self.jobs = DynamoEventStore(cloud.resource("ExternalEventsTable"), cloud.client("dynamodb"))

    # ------------------------------------------------------------------ helpers
    def partner(self, service: str, chats: list[str], order: str = "service", weight: int = 1) -> httpx.Client:
        key, _ = self.keys.create_key(
            service, ["/events/external"], targets=[f"chat_id:{c}" for c in chats], order=order, weight=weight
        )
        return httpx.Client(base_url=self.cloud.http_url, headers={"Authorization": f"Bearer {key}"}, timeout=60)

    @staticmethod
    def post_event(
        client: httpx.Client, event_id: str, chat: str, title: str, card: tuple[str, int] | None = None
    ) -> None:
        data: dict[str, Any] = {
            "title": title,
            "status": "running",
            "target": {"receive_id": chat, "receive_id_type": "chat_id"},
        }
        if card is not None:
            data.update({"event_id": card[0], "revision": card[1]})
        answer = client.post("/events/external", json={"event_id": event_id, "event_type": "bench", "data": data})
        answer.raise_for_status()

    def cards(self) -> list[dict[str, Any]]:
        return httpx.get(f"{self.feishu}/__fake/messages", timeout=60).json()  # type: ignore[no-any-return]

    def refusals(self) -> int:
        counts: list[int] = []
        for fake in (self.feishu, self.tencent):
            counts += httpx.get(f"{fake}/__fake/stats").json()["rate_limited"].values()
        return sum(counts)

    def lane_jobs(self, lane: str) -> list[Job]:
        head = self.jobs.head(lane)
        return [job for seq in range(1, head.next_seq + 1) if (job := self.jobs.job(lane, seq)) is not None]

    @staticmethod
    def until(done: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + DEADLINE_S
        while not done():
            if time.monotonic() > deadline:
                raise SystemExit(f"not delivered within {DEADLINE_S:.0f} s: {what}")
            time.sleep(0.5)

    @staticmethod
    def figures(times_ms: list[int], ceiling: float, calls: int, refused: int, **more: Any) -> dict[str, Any]:
        """Calls a second from the first call to the last (n calls: n - 1 intervals), against the ceiling."""
        times = sorted(times_ms)
        span_s = (times[-1] - times[0]) / 1000 if len(times) > 1 else 0.0
        rate = (len(times) - 1) / span_s if span_s else 0.0
        return {
            "delivered_per_s": round(rate, 2),
            "ceiling_per_s": round(ceiling, 2),
            "ratio": round(rate / ceiling, 3) if ceiling else 0.0,
            "provider_calls": calls + refused,
            "provider_refusals": refused,
            **more,
        }

    @staticmethod
    def lane_violations(jobs: list[Job], delivered_titles: Iterable[str]) -> int:
        """Events of one lane delivered out of its receive order (a title delivered before an earlier one)."""
        position = {job.event.title: index for index, job in enumerate(jobs)}
        return descents([position[title] for title in delivered_titles if title in position])

    # ------------------------------------------------------------------ (a) coalescing
    def revisions(self, tag: str) -> dict[str, Any]:
        args, service, chat = self.args, f"cards-{tag}", f"oc_cards_{tag}"
        client, refused_before = self.partner(service, [chat]), self.refusals()

        def post(revision_of_card: tuple[int, int]) -> None:
            revision, card = revision_of_card
            title = f"card {card} rev {revision}"
            self.post_event(client, f"c{card}-r{revision}", chat, title, (f"card-{card}", revision))

        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=4) as pool:  # every card's revision 1, then every card's 2, ...
            list(pool.map(post, [(r, c) for r in range(1, args.revisions + 1) for c in range(args.cards)]))
        posted_per_s = args.cards * args.revisions / (time.monotonic() - started)
        shown: dict[str, list[int]] = {}

        def all_at_last_revision() -> bool:
            shown.clear()
            for entry in self.cards():
                if entry["receive_id"] == chat:
                    shown.setdefault(entry["message_id"], []).append(int(entry["title"].rsplit(" ", 1)[1]))
            return len(shown) == args.cards and all(revs[-1] == args.revisions for revs in shown.values())

        self.until(all_at_last_revision, "(a) every card at its last revision")
        log = [entry for entry in self.cards() if entry["receive_id"] == chat]
        jobs = self.lane_jobs(service)
        backwards = sum(descents(revs, repeats_count=True) for revs in shown.values())
        return self.figures(
            [entry["at_ms"] for entry in log],
            args.feishu_chat_per_second,
            len(log),
            self.refusals() - refused_before,
            superseded=sum(job.outcome == "superseded" for job in jobs),
            order_violations=backwards + self.lane_violations(jobs, (entry["title"] for entry in log)),
            events=len(jobs),
            posted_per_s=round(posted_per_s, 1),
            max_calls_per_card=max(len(revs) for revs in shown.values()),
            sent_with_a_newer_revision_waiting=self.sent_though_superseded(jobs, log),
        )

    @staticmethod
    def sent_though_superseded(jobs: list[Job], log: list[dict[str, Any]]) -> int:
        """Calls for a card's revision when a newer revision of that card had been accepted a second or more
        before the call (Herald sends only the newest waiting revision; the second covers the call's own
        claim, mark and token, begun before the newer one arrived)."""
        received: dict[str, list[tuple[int, int]]] = defaultdict(list)  # card id -> (revision, received at)
        for job in jobs:
            received[str(job.event.card_id)].append((job.event.revision or 0, job.received_at_ms))
        wasted = 0
        for entry in log:
            card, revision = entry["title"].split(" rev ")
            card_id = f"card-{card.removeprefix('card ')}"
            wasted += any(r > int(revision) and at <= entry["at_ms"] - 1000 for r, at in received[card_id])
        return wasted

    # ------------------------------------------------------------------ (b) lanes
    def one_load(self, service: str, order: str) -> tuple[list[dict[str, Any]], list[str], dict[str, list[Job]]]:
        args = self.args
        chats = [f"oc_{service}_{n}" for n in range(args.chats)]
        client = self.partner(service, chats, order)

        for chat in chats:  # each chat's events together (a job's progress), in one known receive order
            for n in range(args.per_chat):
                self.post_event(client, f"{chat}-{n}", chat, f"{chat} #{n}")
        wanted = args.chats * args.per_chat
        self.until(lambda: sum(e["receive_id"] in chats for e in self.cards()) >= wanted, f"(b) {service}'s events")
        log = [entry for entry in self.cards() if entry["receive_id"] in chats]
        lanes = [Lane(service, f"chat_id:{chat}").key for chat in chats] if order == "target" else [service]
        return log, chats, {lane: self.lane_jobs(lane) for lane in lanes}

    def lanes(self, tag: str) -> dict[str, Any]:
        args, refused_before = self.args, self.refusals()
        laned_log, chats, laned_jobs = self.one_load(f"lanes-{tag}", "target")
        refused = self.refusals() - refused_before
        serial_log, _, serial_jobs = self.one_load(f"serial-{tag}", "service")
        refused_serial = self.refusals() - refused_before - refused
        violations = 0
        for lane_jobs in (*laned_jobs.values(), *serial_jobs.values()):
            titles = {job.event.title for job in lane_jobs}
            violations += self.lane_violations(
                lane_jobs, (e["title"] for e in laned_log + serial_log if e["title"] in titles)
            )
        laned = self.figures(
            [e["at_ms"] for e in laned_log],
            min(args.feishu_app_per_second, len(chats) * args.feishu_chat_per_second),
            len(laned_log),
            refused,
        )
        serial = self.figures([e["at_ms"] for e in serial_log], laned["ceiling_per_s"], len(serial_log), refused_serial)
        return {
            **laned,
            "provider_calls": laned["provider_calls"] + serial["provider_calls"],
            "provider_refusals": refused + refused_serial,
            "superseded": 0,
            "order_violations": violations,
            "service_order_delivered_per_s": serial["delivered_per_s"],
            "speedup_vs_service_order": round(laned["delivered_per_s"] / serial["delivered_per_s"], 2)
            if serial["delivered_per_s"]
            else 0.0,
        }

    # ------------------------------------------------------------------ (c) Tencent IM
    def confirms(self, tag: str) -> dict[str, Any]:
        args, refused_before = self.args, self.refusals()
        receivers = [f"9{tag}{n:05d}" for n in range(args.receivers)]
        rounds = -(-args.confirms // args.receivers)
        asks = [
            (round_, receiver)
            for round_ in range(rounds)
            for receiver in receivers[: min(args.receivers, args.confirms - round_ * args.receivers)]
        ]
        owner = LoopbackOwner().start()
        try:
            key, _ = self.keys.create_key(f"owner-{tag}", ["/internal/v1/confirms/owner"])
            client = httpx.Client(base_url=self.cloud.http_url, headers={"Authorization": f"Bearer {key}"}, timeout=60)
            registered = client.put(f"/internal/v1/confirms/owners/bench{tag}", json=owner.registration())
            registered.raise_for_status()

            def ask(round_: int, receiver: str) -> None:
                business_id = f"{receiver}-{round_}"
                owner.facts[business_id] = "pending"
                body = {
                    "business_type": f"bench{tag}",
                    "business_subtype": "join",
                    "business_id": business_id,
                    "source_event_id": f"evt-{business_id}",
                    "sender_user_id": f"8{tag}{round_:03d}",  # the round: a receiver's pushes keep its order
                    "receiver_user_id": receiver,
                    "message_text": f"round {round_}",
                }
                client.post("/internal/v1/confirms", json=body).raise_for_status()

            started = time.monotonic()
            with ThreadPoolExecutor(max_workers=8) as pool:
                for round_ in range(rounds):  # a receiver's k-th confirm only after its (k-1)-th was created
                    list(pool.map(lambda receiver, r=round_: ask(r, receiver), [rc for rn, rc in asks if rn == round_]))
            created_per_s = len(asks) / (time.monotonic() - started)
            mine = set(receivers)

            def pushes() -> list[dict[str, Any]]:
                messages = httpx.get(f"{self.tencent}/__fake/messages", timeout=60).json()
                return [m for m in messages if m["to"] in mine and m["data"].get("type") == "im_confirm"]

            self.until(lambda: len(pushes()) >= len(asks), "(c) every confirm pushed")
        finally:
            owner.stop()
        pushed = pushes()
        seen: dict[str, list[int]] = defaultdict(list)
        for message in pushed:
            seen[message["to"]].append(int(message["from"][len(tag) + 1 :]))
        out_of_order = sum(descents(order) for order in seen.values())
        return self.figures(
            [m["received_at_ms"] for m in pushed],
            args.tencent_im_per_second,
            len(pushed),
            self.refusals() - refused_before,
            superseded=0,
            order_violations=out_of_order,
            doubled=len(pushed) - len({m["data"]["confirm_id"] for m in pushed}),
            created_per_s=round(created_per_s, 1),
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    # Feishu publishes 50 a second per app and 5 per chat, Tencent IM 200 sendmsg a second; this machine's local
    # cloud (2 cores) makes about ten Feishu calls a second (ten events-worker invocations, each draining one chat
    # at its pace) and takes 7 to 14 owner confirms a second while it delivers them (CPU shared with DynamoDB
    # Local), so the default limits are ones it can reach (README, Performance).
    parser.add_argument("--feishu-app-per-second", type=int, default=8)
    parser.add_argument("--feishu-chat-per-second", type=int, default=1)
    parser.add_argument("--tencent-im-per-second", type=int, default=6)
    parser.add_argument("--latency-ms", type=int, default=100)
    parser.add_argument("--cards", type=int, default=20)
    parser.add_argument("--revisions", type=int, default=10)
    parser.add_argument("--chats", type=int, default=20)
    parser.add_argument("--per-chat", type=int, default=20)
    parser.add_argument("--confirms", type=int, default=2000)
    parser.add_argument("--receivers", type=int, default=500)
    parser.add_argument("--shared-events", type=int, default=400, help="(d): service A's events")
    parser.add_argument("--shared-chats", type=int, default=80, help="(d): the chats A's events go to")
    parser.add_argument("--urgent-events", type=int, default=20, help="(d): service B's events, to one chat")
    parser.add_argument("--no-fair-share", action="store_true", help="(a) to (c) without the app's fair share")
    parser.add_argument("--scenarios", default="abcd", help="which of (a), (b), (c), (d) to run")
    parser.add_argument(
        "--engines",
        choices=["local", "moto"],
        default="local",
        help="the tables' and queues' engines: DynamoDB Local and fauxqs (they serve concurrent workers), or moto "
        "(one request at a time)",
    )
    args = parser.parse_args()
    env = {
        **INTAKE_LIMITS_OFF,
        "HERALD_FEISHU_APP_CALLS_PER_SECOND": str(args.feishu_app_per_second),
        "HERALD_FEISHU_APP_CALLS_PER_MINUTE": "0",
        "HERALD_FEISHU_CHAT_CALLS_PER_SECOND": str(args.feishu_chat_per_second),
        "HERALD_TENCENT_IM_SENDMSG_PER_SECOND": str(args.tencent_im_per_second),
        "HERALD_TENANT_CACHE_SECONDS": "30",  # as deployed (make dev reads a tenant on every use)
        "HERALD_PROVIDER_APP_FAIR_SHARE": str(not args.no_fair_share).lower(),
    }
    limits = {
        "feishu": {
            "app_per_second": args.feishu_app_per_second,
            "chat_per_second": args.feishu_chat_per_second,
            "latency_ms": args.latency_ms,
        },
        "tencent_im": {"sendmsg_per_second": args.tencent_im_per_second, "latency_ms": args.latency_ms},
    }
    report: dict[str, Any] = {
        "limits": {**limits["feishu"], "tencent_im_sendmsg_per_second": args.tencent_im_per_second}
    }
    tag = f"{int(time.time()) % 100_000:05d}"

    def timed(name: str, scenario: Callable[[], dict[str, Any]]) -> None:
        started = time.monotonic()
        report[name] = scenario()
        print(f"{name}: {json.dumps(report[name])} ({time.monotonic() - started:.1f} s)", flush=True)

    with tempfile.TemporaryDirectory() as workdir, backing_engines(Path(workdir), args.engines == "local") as engines:
        work = Path(workdir)
        if set(args.scenarios) & set("abc"):
            with cloud_running(work, engines, env) as cloud:
                set_fake_limits(cloud, limits["feishu"], limits["tencent_im"])
                bench = Bench(cloud, args)
                scenarios = (("a_revisions", bench.revisions), ("b_lanes", bench.lanes), ("c_confirms", bench.confirms))
                for name, scenario in scenarios:
                    if name[0] in args.scenarios:
                        timed(name, lambda scenario=scenario: scenario(tag))  # type: ignore[misc]
        if "d" in args.scenarios:
            timed("d_shared_app", lambda: shared_app(lambda cloud: Bench(cloud, args), work, engines, env, tag, limits))
        fakes = json.loads(engines["backing"].read_text())["providers"]["urls"]  # every cloud's, in `herald backing`
        report["refused_by_limit"] = {  # which limit refused the calls that were (all scenarios)
            name: httpx.get(f"{fakes[name]}/__fake/stats").json()["rate_limited"] for name in ("feishu", "tencent_im")
        }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
