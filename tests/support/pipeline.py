"""Drives the confirm workers in process, on moto, as their event source mappings would: stream records
of the invitations and confirms tables to their functions, IM push messages to the IM sender."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import boto3
from herald_ops.template import StackTemplate

from herald_dev.sqs_source import failed_message_ids, sqs_record
from herald_dev.stream_source import stream_record
from tests.support.aws import load_function
from tests.support.lambda_context import FakeLambdaContext


@dataclass
class StreamTap:
    """Reads one table's stream from where it last stopped."""

    stream_arn: str
    iterators: dict[str, str | None] = field(default_factory=dict)
    # An explicit endpoint: moto's in-process mock misses boto3's default route for this service.
    client: Any = field(
        default_factory=lambda: boto3.client(
            "dynamodbstreams", endpoint_url="https://streams.dynamodb.us-east-1.amazonaws.com"
        )
    )

    def read(self) -> list[dict[str, Any]]:
        streams = self.client
        records: list[dict[str, Any]] = []
        for shard in streams.describe_stream(StreamArn=self.stream_arn)["StreamDescription"]["Shards"]:
            shard_id = shard["ShardId"]
            if shard_id not in self.iterators:
                self.iterators[shard_id] = streams.get_shard_iterator(
                    StreamArn=self.stream_arn, ShardId=shard_id, ShardIteratorType="TRIM_HORIZON"
                )["ShardIterator"]
            iterator = self.iterators[shard_id]
            if iterator is None:
                continue
            response = streams.get_records(ShardIterator=iterator)
            records.extend(stream_record(r, self.stream_arn, "us-east-1") for r in response["Records"])
            self.iterators[shard_id] = response.get("NextShardIterator")
        return records


class ConfirmPipeline:
    def __init__(self, stack: StackTemplate) -> None:
        self.stack = stack
        self.invitations = StreamTap(stack.get_att("InvitationsTable", "StreamArn"))
        self.confirms = StreamTap(stack.get_att("ConfirmsTable", "StreamArn"))
        self.invitations_outbox = load_function("invitations_outbox").handler
        self.confirms_outbox = load_function("confirms_outbox").handler
        self.im_sender = load_function("im_sender").handler
        self.queue_url = stack.resolve({"Ref": "ImPushQueue"})
        self.queue_arn = stack.get_att("ImPushQueue", "Arn")
        self.delivered_events: list[dict[str, Any]] = []

    def pump_streams(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Feed new stream records to both outbox functions; returns the events given."""
        invitation_records = self.invitations.read()
        if invitation_records:
            self.invitations_outbox({"Records": invitation_records}, FakeLambdaContext())
        confirm_records = self.confirms.read()
        if confirm_records:
            self.confirms_outbox({"Records": confirm_records}, FakeLambdaContext())
        return invitation_records, confirm_records

    def pump_queue(self, backoff_elapses: bool = False) -> int:
        """One receive-invoke-delete round on the IM push queue; returns how many were received.
        `backoff_elapses`: the messages it kept are visible again at once, as if their backoff had passed."""
        sqs = boto3.client("sqs")
        messages = sqs.receive_message(
            QueueUrl=self.queue_url, MaxNumberOfMessages=10, AttributeNames=["All"], MessageAttributeNames=["All"]
        ).get("Messages", [])
        if not messages:
            return 0
        event = {"Records": [sqs_record(m, self.queue_arn, "us-east-1") for m in messages]}
        self.delivered_events.append(event)
        result = self.im_sender(event, FakeLambdaContext())
        failed = failed_message_ids(result, [m["MessageId"] for m in messages])
        for message in messages:
            if message["MessageId"] not in failed:
                sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])
            elif backoff_elapses:
                sqs.change_message_visibility(
                    QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
                )
        return len(messages)

    def drain(self, rounds: int = 5, backoff_elapses: bool = False) -> None:
        """Streams and queue until quiet; `backoff_elapses`: pushes sent back (an app's slots all in flight, a
        retry) come back at once."""
        for _ in range(rounds):
            self.pump_streams()
            while self.pump_queue(backoff_elapses):
                pass
