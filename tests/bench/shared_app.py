"""delivery_at_limits (d): two services sharing one Feishu app (issue 47, item 2), and the local clouds the
bench's scenarios run on.

Service A (`order: target`) posts `--shared-events` events to `--shared-chats` chats; right after, service B posts
`--urgent-events` events to one chat, while A's backlog is still far longer than B's. Both keys act for the same
tenant: one Feishu app, the fake enforcing `--feishu-app-per-second` for it and Feishu's own 5 a second per chat.
Printed for each weighting (A:B, 1:1 and 3:1): each service's calls a second while both wait (from B's first post
to B's last card) against its share of the app's limit, B's last card's delay from its first post, refusals and
order. Then the same load on a cloud without fair share (`HERALD_PROVIDER_APP_FAIR_SHARE=false`): B's delay there
over B's delay with fair share is `b_sooner_than_without_fair_share`."""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from herald.events.models import Lane
from tests.support.local_cloud import DynamoDBLocal, FauxQs, LocalCloudProcess, start_backing

if TYPE_CHECKING:
    from tests.bench.delivery_at_limits import Bench

SHARED_CHAT_PER_SECOND = 5  # Feishu's own per-chat limit: B's one chat can go faster than its share of the app


@contextlib.contextmanager
def backing_engines(work: Path, local: bool) -> Iterator[dict[str, Any]]:
    """The tables' and queues' engines and `herald backing` (AWS and the provider fakes), shared by every cloud
    the bench starts (each its own stack: its own tables and queues)."""
    tables, queues = (DynamoDBLocal(work).start(), FauxQs(work).start()) if local else (None, None)
    # The provider fakes run in a process of their own, as the providers do: in the local cloud's (its busiest
    # process), a call's arrival was stamped only once that process let the fake run, up to 150 ms late.
    backing, backing_state = start_backing(work)
    try:
        yield {
            "dynamodb_endpoint": tables.endpoint if tables else None,
            "sqs_endpoint": queues.endpoint if queues else None,
            "backing": backing_state,
        }
    finally:
        backing.terminate()
        backing.wait(timeout=20)
        for engine in (tables, queues):
            if engine is not None:
                engine.stop()


@contextlib.contextmanager
def cloud_running(work: Path, engines: dict[str, Any], env: dict[str, str]) -> Iterator[LocalCloudProcess]:
    cloud = LocalCloudProcess(work, env=env, **engines)
    cloud.start()
    try:
        yield cloud
    finally:
        cloud.stop()


def set_fake_limits(cloud: LocalCloudProcess, feishu: dict[str, int], tencent_im: dict[str, int]) -> None:
    httpx.post(f"{cloud.fake_url('feishu')}/__fake/limits", json=feishu).raise_for_status()
    httpx.post(f"{cloud.fake_url('tencent_im')}/__fake/limits", json=tencent_im).raise_for_status()


class SharedApp:
    def __init__(self, bench: Bench) -> None:
        self.bench = bench
        self.args: argparse.Namespace = bench.args

    def load(self, tag: str, weights: tuple[int, int]) -> dict[str, Any]:
        """One run of the load: A's events, then B's at once, each service with its key's weight."""
        bench, args = self.bench, self.args
        a_chats = [f"oc_share_{tag}_a{n}" for n in range(args.shared_chats)]
        b_chat = f"oc_share_{tag}_b"
        a = bench.partner(f"share-a-{tag}", a_chats, "target", weight=weights[0])
        b = bench.partner(f"share-b-{tag}", [b_chat], weight=weights[1])
        refused_before = bench.refusals()
        a_posts = [(f"a-{tag}-{n}", a_chats[n % len(a_chats)], f"a {n}") for n in range(args.shared_events)]
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(lambda post: bench.post_event(a, *post), a_posts))
        b_posted_at = time.time() * 1000
        for n in range(args.urgent_events):  # one lane: posted in its order
            bench.post_event(b, f"b-{tag}-{n}", b_chat, f"b {n}")
        everyone = {*a_chats, b_chat}
        wanted = args.shared_events + args.urgent_events
        bench.until(lambda: sum(e["receive_id"] in everyone for e in bench.cards()) >= wanted, f"(d) {tag}")
        log = [entry for entry in bench.cards() if entry["receive_id"] in everyone]
        b_log = [entry for entry in log if entry["receive_id"] == b_chat]
        b_done_at = max(entry["at_ms"] for entry in b_log)
        span_s = max(0.001, (b_done_at - b_posted_at) / 1000)
        a_while = sum(1 for e in log if e["receive_id"] != b_chat and b_posted_at <= e["at_ms"] <= b_done_at)
        limit = args.feishu_app_per_second
        lanes = [Lane(f"share-a-{tag}", f"chat_id:{chat}").key for chat in a_chats] + [f"share-b-{tag}"]
        violations = sum(
            bench.lane_violations(jobs, (e["title"] for e in log)) for jobs in (bench.lane_jobs(lane) for lane in lanes)
        )
        a_share, b_share = (limit * w / sum(weights) for w in weights)
        return {
            "weights": f"{weights[0]}:{weights[1]}",
            "a_per_s": round(a_while / span_s, 2),
            "a_share_per_s": round(a_share, 2),
            "a_of_share": round(a_while / span_s / a_share, 3),
            "b_per_s": round((len(b_log) - 1) / span_s, 2) if len(b_log) > 1 else 0.0,
            "b_share_per_s": round(b_share, 2),
            "b_of_share": round(len(b_log) / span_s / b_share, 3),
            "b_last_card_s": round(span_s, 2),
            "provider_calls": len(log),
            "provider_refusals": bench.refusals() - refused_before,
            "order_violations": violations,
        }


def shared_app(
    bench_of: Any, work: Path, engines: dict[str, Any], env: dict[str, str], tag: str, limits: dict[str, Any]
) -> dict[str, Any]:
    """(d): the load at 1:1 and 3:1 on a cloud with fair share, then at 1:1 on one without (the baseline)."""
    env = {**env, "HERALD_FEISHU_CHAT_CALLS_PER_SECOND": str(SHARED_CHAT_PER_SECOND)}
    feishu = {**limits["feishu"], "chat_per_second": SHARED_CHAT_PER_SECOND}
    runs: list[dict[str, Any]] = []
    with cloud_running(work, engines, env) as cloud:
        set_fake_limits(cloud, feishu, limits["tencent_im"])
        runs += [SharedApp(bench_of(cloud)).load(f"{tag}w{a}{b}", (a, b)) for a, b in ((1, 1), (3, 1))]
    unfair_env = {**env, "HERALD_PROVIDER_APP_FAIR_SHARE": "false"}
    with cloud_running(work, engines, unfair_env) as cloud:
        set_fake_limits(cloud, feishu, limits["tencent_im"])
        baseline = SharedApp(bench_of(cloud)).load(f"{tag}nofair", (1, 1))
    return {
        "with_fair_share": runs,
        "without_fair_share": baseline,
        "b_sooner_than_without_fair_share": [
            round(baseline["b_last_card_s"] / run["b_last_card_s"], 2) for run in runs if run["b_last_card_s"]
        ],
        "provider_refusals": sum(run["provider_refusals"] for run in runs),
        "order_violations": sum(run["order_violations"] for run in [*runs, baseline]),
    }
