from __future__ import annotations

from dataclasses import dataclass


@dataclass
class FakeLambdaContext:
    function_name: str = "test-function"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:test-function"
    aws_request_id: str = "00000000-0000-0000-0000-000000000001"
    function_version: str = "$LATEST"
    log_group_name: str = "/aws/lambda/test-function"
    log_stream_name: str = "test"
    remaining_ms: int = 10_000

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms
