"""AWS's published on-demand prices the cost bench (cost_per_million.py) multiplies by: US East (N. Virginia),
first pricing tier, no free tier, as read on 2026-12-06 from the page named beside each."""

from __future__ import annotations

REGION = "us-east-1"
READ_ON = "2026-12-06"

# https://aws.amazon.com/dynamodb/pricing/on-demand/ (on-demand since 2024-11-01)
DYNAMODB_WRITE_REQUEST_UNIT = 0.625 / 1_000_000
DYNAMODB_READ_REQUEST_UNIT = 0.125 / 1_000_000
# same page: "GetRecords API calls invoked by AWS Lambda as part of DynamoDB triggers are free"
DYNAMODB_STREAM_READ_BY_LAMBDA = 0.0

# https://aws.amazon.com/sqs/pricing/ (FIFO queues; each 64 KB chunk of a payload is billed as one request)
SQS_FIFO_REQUEST = 0.50 / 1_000_000

# https://aws.amazon.com/lambda/pricing/ (x86; duration rounded up to 1 ms, at the function's memory)
LAMBDA_REQUEST = 0.20 / 1_000_000
LAMBDA_GB_SECOND = 0.0000166667

# https://aws.amazon.com/api-gateway/pricing/ (HTTP APIs: first 300 million a month; WebSocket APIs: messages
# in 32 KB increments, first billion a month, and connection minutes)
HTTP_API_REQUEST = 1.00 / 1_000_000
WEBSOCKET_MESSAGE = 1.00 / 1_000_000
WEBSOCKET_CONNECTION_MINUTE = 0.25 / 1_000_000
