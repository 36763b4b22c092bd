"""The local SQS deduplicates a FIFO send for five minutes from the first, as SQS does, even after a consumer
took and deleted the first copy (see herald_dev.moto_patches); messages moved to a DLQ are not sends."""

from __future__ import annotations

import boto3
from herald_ops.template import StackTemplate


def test_a_resend_with_the_same_deduplication_id_is_dropped_after_the_first_was_consumed(aws: StackTemplate) -> None:
    sqs = boto3.client("sqs")
    url = aws.resolve({"Ref": "TurnsQueue"})
    sqs.send_message(QueueUrl=url, MessageBody="first", MessageGroupId="g", MessageDeduplicationId="d1")
    (taken,) = sqs.receive_message(QueueUrl=url)["Messages"]
    sqs.delete_message(QueueUrl=url, ReceiptHandle=taken["ReceiptHandle"])
    sqs.send_message(QueueUrl=url, MessageBody="again", MessageGroupId="g", MessageDeduplicationId="d1")
    sqs.send_message(QueueUrl=url, MessageBody="other", MessageGroupId="g", MessageDeduplicationId="d2")
    assert [m["Body"] for m in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]] == ["other"]
